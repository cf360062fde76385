SELECT fence, value FROM dlock_leaders WHERE name = ?1
