 UNION ALL SELECT %zu, _ascii'%s', %lld, %lld
