-- A held lock's lease left on the server's clock (assert_ttl).
SELECT {{expires}} - {{nowms}} FROM {{table}} {{own}}
