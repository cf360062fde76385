SELECT COUNT(*) FROM {{fseq}}, {{boot}}
