-- Set the sequence to {{n}}: the seed (%lld), or a higher durable fence (%llu).
DO SETVAL({{fseq}}, {{n}})
