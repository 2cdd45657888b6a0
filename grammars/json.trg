%trg 1
%start json
%max_depth 64
# Generic JSON text (RFC 8259), with whitespace between tokens.
#
# Predictive at byte level: every rule consumes the whitespace that follows its own tokens,
# so after any value the next byte alone decides between more whitespace, "," and the
# closing bracket, and the two recursive rules (object, array) never compete for a byte.
# A member is written inline in `object` so that each nesting level costs one frame for
# `value` and one for `object` or `array`: %max_depth 64 allows 31 levels of nesting.
# Numbers are kept as in DESIGN.md: no exponent, at most 16 integer and 16 fraction digits.

json    ::= ws value ws ;
value   ::= object | array | string | number | "true" | "false" | "null" ;
object  ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}" ;
array   ::= "[" ws ( value ws ( "," ws value ws )* )? "]" ;
string  ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" hex{4} ) )* "\"" ;
hex     ::= [0-9a-fA-F] ;
number  ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ;
ws      ::= [ \t\n\r]* ;
