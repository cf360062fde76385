-- Set the sequence to {{n}}: the seed (?), or a higher durable fence (?).
DO SETVAL({{fseq}}, {{n}})
