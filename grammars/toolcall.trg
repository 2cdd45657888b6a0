%trg 1
%start call
%max_depth 64
# A tool-call envelope: the special token <tool_call>, one JSON object with exactly the
# members "name" (an identifier string) and "arguments" (any JSON object), in that order,
# then the special token </tool_call>. Special tokens have no bytes; they are matched by
# name against the tokenizer's special tokens.
#
# The JSON part is json.trg's (whitespace after every token keeps it predictive).

call      ::= special("<tool_call>") ws
              "{" ws "\"name\"" ws ":" ws tool ws "," ws "\"arguments\"" ws ":" ws object ws "}" ws
              special("</tool_call>") ;
tool      ::= "\"" [a-zA-Z_] [a-zA-Z0-9_.\-]{0,63} "\"" ;

value     ::= object | array | string | number | "true" | "false" | "null" ;
object    ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}" ;
array     ::= "[" ws ( value ws ( "," ws value ws )* )? "]" ;
string    ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" hex{4} ) )* "\"" ;
hex       ::= [0-9a-fA-F] ;
number    ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ;
ws        ::= [ \t\n\r]* ;
