%trg 1
%start file
# Comma-separated values (RFC 4180), any Unicode text in fields. Records end with LF or
# CRLF; a final line break is an empty last record. Quoted fields may hold commas, line
# breaks and doubled quotes "". No recursion: the whole grammar compiles to one DFA.

file     ::= record ( "\r"? "\n" record )* ;
record   ::= field ( "," field )* ;
field    ::= [^,"\r\n]* | "\"" ( [^"] | "\"\"" )* "\"" ;
