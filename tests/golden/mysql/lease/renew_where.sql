 WHERE l.name IN ({{keys}})
