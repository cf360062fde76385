 AS l STRAIGHT_JOIN ({{rows}}) AS b ON l.owner = b.tok
