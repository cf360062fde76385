SELECT name, fence FROM {{seq}} LIMIT 0
