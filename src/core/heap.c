/*
 * heap.c - the two schedules of held locks: min-heaps by when each lock
 * is next due, one for the renew thread (its renewal time, at the latest
 * its lease end) and one for the lease thread (its lease end).  All under
 * dlock__reg_mu; a place is reserved at acquire, so putting a lock in
 * never allocates.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "errors.h"
#include "process.h"
#include "regstate.h"

/* A library thread sleeps on its heap's cv until when_ms (INT64_MAX: until
 * woken), saying so in the heap (heap_put reads it). */
void dlock__heap_sleep(struct dlock__heap *h, int64_t when_ms)
{
    struct timespec ts;

    h->sleep_until = when_ms;
    if (when_ms == INT64_MAX) {
        pthread_cond_wait(h->cv, &dlock__reg_mu);
    } else {
        ts.tv_sec = (time_t)(when_ms / 1000);
        ts.tv_nsec = (long)(when_ms % 1000) * 1000000L;
        pthread_cond_timedwait(h->cv, &dlock__reg_mu, &ts);
    }
    h->sleep_until = 0;
}

static void heap_swap(struct dlock__heap *h, size_t a, size_t b)
{
    struct dlock__held *t = h->v[a];

    h->v[a] = h->v[b];
    h->v[b] = t;
    h->v[a]->heap_idx[h->which] = a;
    h->v[b]->heap_idx[h->which] = b;
}

static void heap_up(struct dlock__heap *h, size_t i)
{
    int w = h->which;

    while (i > 0 && h->v[(i - 1) / 2]->due[w] > h->v[i]->due[w]) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(struct dlock__heap *h, size_t i)
{
    int w = h->which;

    for (;;) {
        size_t l = 2 * i + 1, m = i;

        if (l < h->len && h->v[l]->due[w] < h->v[m]->due[w])
            m = l;
        if (l + 1 < h->len && h->v[l + 1]->due[w] < h->v[m]->due[w])
            m = l + 1;
        if (m == i)
            return;
        heap_swap(h, i, m);
        i = m;
    }
}

void dlock__heap_remove(struct dlock__heap *h, struct dlock__held *lk)
{
    size_t i = lk->heap_idx[h->which];

    if (i == SIZE_MAX)
        return;
    lk->heap_idx[h->which] = SIZE_MAX;
    if (i != --h->len) {
        struct dlock__held *moved = h->v[h->len];

        h->v[i] = moved;
        moved->heap_idx[h->which] = i;
        heap_up(h, i);
        heap_down(h, moved->heap_idx[h->which]);
    }
}

/* Put lk in heap h (or move it) to be due at `due`, if that heap's thread
 * is to look after it.  Wakes the thread when lk became the first due. */
void dlock__heap_put(struct dlock__heap *h, struct dlock__held *lk, int64_t due)
{
    int w = h->which;

    if (!lk->heap_slot[w] || lk->renewable <= 0 ||
        lk->gen != dlock__generation() ||
        (w == H_RENEW && !lk->view.auto_renew)) {
        dlock__heap_remove(h, lk);
        return;
    }
    lk->due[w] = due;
    if (lk->heap_idx[w] == SIZE_MAX) {
        lk->heap_idx[w] = h->len;
        h->v[h->len++] = lk; /* reserved: len <= want <= cap */
    }
    heap_up(h, lk->heap_idx[w]);
    heap_down(h, lk->heap_idx[w]);
    if (lk->heap_idx[w] == 0 && due < h->sleep_until)
        pthread_cond_broadcast(h->cv);
}

/* Reserve lk's place in heap h (at acquire, before the store call). */
int dlock__heap_reserve(struct dlock__heap *h, struct dlock__held *lk)
{
    if (h->want + 1 > h->cap) {
        size_t cap = h->cap < 64 ? 64 : 2 * h->cap;
        struct dlock__held **v = realloc(h->v, cap * sizeof(*v));

        if (v == NULL)
            return dlock__enomem();
        h->v = v;
        h->cap = cap;
    }
    h->want++;
    lk->heap_slot[h->which] = 1;
    return DLOCK_OK;
}

void dlock__heap_unreserve(struct dlock__heap *h, struct dlock__held *lk)
{
    dlock__heap_remove(h, lk);
    if (lk->heap_slot[h->which]) {
        lk->heap_slot[h->which] = 0;
        h->want--;
    }
}

/* Both heaps by lk's schedule: the renew thread's at its renewal time (at
 * the latest its lease end), the lease thread's at its lease end. */
void dlock__heap_set(struct dlock__held *lk)
{
    int64_t end = dlock__lease_end_of(lk);

    dlock__heap_put(&dlock__heaps[H_RENEW], lk,
                    lk->next_renew < end ? lk->next_renew : end);
    dlock__heap_put(&dlock__heaps[H_LEASE], lk, end);
}

void dlock__heaps_remove(struct dlock__held *lk)
{
    dlock__heap_remove(&dlock__heaps[H_RENEW], lk);
    dlock__heap_remove(&dlock__heaps[H_LEASE], lk);
}
