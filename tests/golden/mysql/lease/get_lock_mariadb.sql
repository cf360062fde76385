SELECT GET_LOCK(%s, %lld.%03lld)
