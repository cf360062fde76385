SELECT name, fence FROM {{fences}} LIMIT 0
