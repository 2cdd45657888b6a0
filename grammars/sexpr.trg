%trg 1
%start program
%max_depth 64
# S-expressions with Unicode symbols: lists in ( ) or [ ], quote ', strings, numbers and
# symbols whose letters may be any non-ASCII scalar value (λ, ∀, 名前, emoji ...).
# A ; comment runs to the end of its line (and needs that line break).
#
# Predictive at byte level: "ab" could be one symbol or two, so the data of a sequence are
# separated by at least one space, line break or comment ("(a (b))", not "(a(b))"); after
# an atom the next byte is either part of it or a separator, never both. A symbol may
# start with + or - only when no digit follows, so numbers and symbols never share a
# spelling. Each nesting level costs three frames (list, items, datum).

program    ::= ws items? ;
datum      ::= list | "'" datum | atom ;
list       ::= "(" ws items? ")" | "[" ws items? "]" ;
items      ::= datum ( sep datum )* ws ;
atom       ::= number | string | symbol ;
number     ::= [+\-]? [0-9]+ ( "." [0-9]+ )? ;
string     ::= "\"" ( [^"\\] | "\\" ["\\nt] )* "\"" ;
symbol     ::= initial subsequent* | [+\-] ( ( initial | [+\-.@] ) subsequent* )? ;
initial    ::= [a-zA-Z!$%&*/:<=>?\^_~\u{80}-\u{10FFFF}] ;
subsequent ::= initial | [0-9+\-.@] ;
sep        ::= ( [ \t\r\n] | comment ) ws ;
ws         ::= ( [ \t\r\n] | comment )* ;
comment    ::= ";" [^\n]* "\n" ;
