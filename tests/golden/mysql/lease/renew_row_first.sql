SELECT %zu AS i, _ascii'%s' AS tok, %lld AS ms, %lld AS s
