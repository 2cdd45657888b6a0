%trg 1
%start input
%max_depth 128
# Arithmetic expressions over decimal numbers: + - * / %, unary minus, parentheses.
#
# Precedence lives in the rule structure (expr > term > factor). Whitespace follows every
# token and is consumed by the rule that read the token, so after a factor the next byte
# alone says whether the term continues ("*", "/", "%"), the expression continues ("+",
# "-") or the group closes (")"): no two rules ever want the same byte.
# Each parenthesis costs three frames (factor, expr, term): %max_depth 128 allows 41 levels.

input   ::= ws expr ;
expr    ::= term ( [+\-] ws term )* ;
term    ::= factor ( [*/%] ws factor )* ;
factor  ::= "-" ws factor | number ws | "(" ws expr ")" ws ;
number  ::= [0-9]+ ( "." [0-9]+ )? ;
ws      ::= [ \t\r\n]* ;
