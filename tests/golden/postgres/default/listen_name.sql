SELECT set_config('dlock.observe', $1, false)
