/*
 * random.h - random bytes, jitter and owner tokens (random.c).
 */
#ifndef DLOCK_CORE_RANDOM_H
#define DLOCK_CORE_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Owner tokens: 128 random bits as 32 lowercase hex digits. */
#define DLOCK_TOKEN_HEX 32

/* len bytes from the kernel's CSPRNG: DLOCK_OK, or a failure with its
 * message. */
int dlock__random(void *buf, size_t len);
/* A fresh owner token, NUL-terminated. */
int dlock__token(char out[DLOCK_TOKEN_HEX + 1]);
/* Cheap jitter (backoff, reconnect delays): not for secrets. */
uint32_t dlock__rand32(void);

#endif /* DLOCK_CORE_RANDOM_H */
