-- The character set of the lock table's name column (?: the table's
-- bare name, an escaped literal).
SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'name'
