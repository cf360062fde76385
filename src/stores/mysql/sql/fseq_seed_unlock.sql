DO RELEASE_LOCK('dlock-seed:{{seed_key}}')
