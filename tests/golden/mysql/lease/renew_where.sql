 WHERE l.name IN (%s)
