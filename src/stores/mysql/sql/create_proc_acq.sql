-- Session mode's one-CALL acquire (MySQL, MariaDB < 10.3: no fence
-- sequence).  Answers one row (got, fence): got 0, GET_LOCK is taken and
-- nothing happened; 1, acquired with fence; 2, we hold the GET_LOCK but a
-- row is there (the caller judges it, still holding the GET_LOCK).  Any
-- error inside undoes what it did (its row, its GET_LOCK) before it
-- reaches the caller.  The name carries a version (acq2): a later dlock
-- with another procedure makes a new one.
-- {{fence_next}}: fence_next.sql on {{seq}}, for the key p_key.
CREATE PROCEDURE {{proc_acq}}(p_key VARCHAR(64) CHARACTER SET utf8mb4, p_full VARBINARY(1024), p_owner CHAR(32) CHARACTER SET ascii, p_ttl_ms BIGINT, p_host VARCHAR(255) CHARACTER SET utf8mb4, p_pid BIGINT)
    MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
    DECLARE v_got INT DEFAULT 0;
    DECLARE v_fence BIGINT UNSIGNED DEFAULT 0;
    DECLARE EXIT HANDLER FOR 1062 SELECT 2, 0;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
        IF v_got = 1 THEN
            DELETE FROM {{table}} WHERE name = p_key AND owner = p_owner;
            DO RELEASE_LOCK(p_key);
        END IF;
        RESIGNAL;
    END;
    SET v_got = IFNULL(GET_LOCK(p_key, 0), 0);
    IF v_got <> 1 THEN
        SELECT 0, 0;
    ELSE
        INSERT INTO {{table}} (name, connection_id, created, ttl, lock_acquired, owner, expires_ms, acquired_ms, host, pid, full_name)
            VALUES (p_key, CONNECTION_ID(), UNIX_TIMESTAMP(), (p_ttl_ms + 999) DIV 1000, 1, p_owner, {{nowms}} + p_ttl_ms, {{nowms}}, p_host, p_pid, p_full);
        {{fence_next}};
        SET v_fence = LAST_INSERT_ID();
        UPDATE {{table}} SET fence = v_fence WHERE name = p_key AND owner = p_owner;
        SELECT 1, v_fence;
    END IF;
END
