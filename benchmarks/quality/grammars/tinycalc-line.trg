%trg 1
%start call
%max_depth 258
# The tool arm's call format: one tinycalc-1 expression on one line, optionally ended by one
# newline, after which only EOS is allowed. The expression is grammars/tinycalc.trg's with
# whitespace restricted to spaces, so a newline ends the call instead of continuing the
# expression to the token budget. Every string accepted is a tinycalc-1 expression that
# trgc.tools.tinycalc parses (LF is tinycalc whitespace).
call     ::= expr "\n"? ;
expr     ::= ws ( "-" ws )* ( number | "(" expr ")" ) ws power?
             ( operator ws ( "-" ws )* ( number | "(" expr ")" ) ws power? )* ;
operator ::= "+" | "-" | "*" | "/" ;
power    ::= "^" ws exponent ws ;
exponent ::= "-"? ( [0-9] | [1-5] [0-9] | "6" [0-4] ) ;
number   ::= [0-9]+ ( "." [0-9]{1,18} )? ;
ws       ::= " "* ;
