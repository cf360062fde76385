CREATE PROCEDURE `shared_locks_acq2`(p_key VARCHAR(64) CHARACTER SET utf8mb4, p_full VARBINARY(1024), p_owner CHAR(32) CHARACTER SET ascii, p_ttl_ms BIGINT, p_host VARCHAR(255) CHARACTER SET utf8mb4, p_pid BIGINT)
    MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
    DECLARE v_got INT DEFAULT 0;
    DECLARE v_fence BIGINT UNSIGNED DEFAULT 0;
    DECLARE EXIT HANDLER FOR 1062 SELECT 2, 0;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        IF v_got = 1 THEN
            DELETE FROM `shared_locks` WHERE name = p_key AND owner = p_owner;
            DO RELEASE_LOCK(p_key);
        END IF;
        RESIGNAL;
    END;
    SET v_got = IFNULL(GET_LOCK(p_key, 0), 0);
    IF v_got <> 1 THEN
        SELECT 0, 0;
    ELSE
        INSERT INTO `shared_locks` (name, connection_id, created, ttl, lock_acquired, owner, expires_ms, acquired_ms, host, pid, full_name)
            VALUES (p_key, CONNECTION_ID(), UNIX_TIMESTAMP(), (p_ttl_ms + 999) DIV 1000, 1, p_owner, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + p_ttl_ms, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), p_host, p_pid, p_full);
        INSERT INTO `shared_locks_seq` (name, fence) VALUES (p_key, LAST_INSERT_ID(CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED))) ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED)));
        SET v_fence = LAST_INSERT_ID();
        UPDATE `shared_locks` SET fence = v_fence WHERE name = p_key AND owner = p_owner;
        SELECT 1, v_fence;
    END IF;
END
