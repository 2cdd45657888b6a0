%trg 1
%start expr
%max_depth 257
# tinycalc-1 expressions (docs/tinycalc.md), exactly the language trgc.tools.tinycalc parses.
#
# Whitespace (space, tab, CR, LF) may precede the expression and follows every token, so the
# next byte always decides: after a token only more whitespace or the next token can come.
# Precedence (^ over unary - over * / over + -) is semantics, not syntax: the language is the
# same flat sequence of operands and operators, so it is written here with a single recursive
# rule. Each "(" opens one frame of `expr`; %max_depth 257 = the start frame + the tinycalc-1
# nesting limit of 256 parentheses. The other tinycalc-1 limits (4,096 input bytes, 10,000
# operations) and value range checks are not part of the grammar.
expr     ::= ws ( "-" ws )* ( number | "(" expr ")" ) ws power?
             ( operator ws ( "-" ws )* ( number | "(" expr ")" ) ws power? )* ;
operator ::= "+" | "-" | "*" | "/" ;
power    ::= "^" ws exponent ws ;
# an integer from -64 to 64 without leading zeros; "^" binds once (2^3^2 is not allowed)
exponent ::= "-"? ( [0-9] | [1-5] [0-9] | "6" [0-4] ) ;
# at most 18 fraction digits: literals are never rounded
number   ::= [0-9]+ ( "." [0-9]{1,18} )? ;
ws       ::= [ \t\r\n]* ;
