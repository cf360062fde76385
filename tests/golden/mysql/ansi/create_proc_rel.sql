CREATE PROCEDURE "app_locks_rel1"(p_key VARCHAR(64) CHARACTER SET utf8mb4, p_owner CHAR(32) CHARACTER SET ascii)
    MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
    DECLARE v_n INT DEFAULT 0;
    DELETE FROM "app_locks" WHERE name = p_key AND owner = p_owner AND COALESCE(expires_ms, (created + ttl + 1) * 1000) > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AND connection_id = CONNECTION_ID() AND IS_USED_LOCK(p_key) = CONNECTION_ID();
    SET v_n = ROW_COUNT();
    IF v_n = 1 THEN
        DO RELEASE_LOCK(p_key);
    END IF;
    SELECT v_n;
END
