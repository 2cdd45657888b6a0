%trg 1
%start input
%max_depth 128
# Propositional formulas with Unicode or ASCII operators: ¬ ! (not), ∧ & (and),
# ∨ | (or), → -> (implies), ↔ <-> (iff), constants ⊤ ⊥, and variables made of Latin,
# Greek or Cyrillic letters, digits, _ and '.
#
# Predictive at byte level: ∧ ∨ → ↔ all start with the byte E2, so they cannot be split
# over precedence levels (the level that reads ∧ would compete for E2 with the level that
# reads ∨). Precedence is semantics, not syntax, so the binary operators are one flat
# list, as in tinycalc.trg. For the same reason variables have no E2-led characters
# (such as subscript digits) after their first letter.

input    ::= ws formula ;
formula  ::= unary ( binop ws unary )* ;
unary    ::= ( "¬" | "!" ) ws unary | atom ws ;
atom     ::= "⊤" | "⊥" | var | "(" ws formula ")" ;
binop    ::= "∧" | "&" | "∨" | "|" | "→" | "->" | "↔" | "<->" ;
var      ::= letter ( letter | [0-9_'] )* ;
letter   ::= [a-zA-Z\u{391}-\u{3A1}\u{3A3}-\u{3A9}\u{3B1}-\u{3C9}\u{400}-\u{4FF}] ;
ws       ::= [ \t\r\n]* ;
