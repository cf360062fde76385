 AS l STRAIGHT_JOIN (%s) AS b ON l.owner = b.tok
