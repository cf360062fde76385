SELECT GET_LOCK(%s, %lld)
