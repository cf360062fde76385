-- Session mode's one-CALL release: answers the number of rows deleted,
-- and lets go of the GET_LOCK only if it deleted our row.
CREATE PROCEDURE {{proc_rel}}(p_key VARCHAR(64) CHARACTER SET utf8mb4, p_owner CHAR(32) CHARACTER SET ascii)
    MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
    DECLARE v_n INT DEFAULT 0;
    DELETE FROM {{table}} WHERE name = p_key AND owner = p_owner AND {{expires}} > {{nowms}} AND connection_id = CONNECTION_ID() AND IS_USED_LOCK(p_key) = CONNECTION_ID();
    SET v_n = ROW_COUNT();
    IF v_n = 1 THEN
        DO RELEASE_LOCK(p_key);
    END IF;
    SELECT v_n;
END
