"""resp.py - one Redis command off the front of a byte buffer, for the
test proxies that pick out what dlock sends (tests/adv46/drop_release.py,
tests/stores/redis/lose_reply.py).
"""


def parse(buf):
    """(args, rest): the first command of buf (RESP array, or an inline
    command as one argument) and what follows it; (None, buf) while buf
    does not hold a whole command yet."""
    if not buf.startswith(b'*'):
        i = buf.find(b'\r\n')
        return (None, buf) if i < 0 else ([buf[:i]], buf[i + 2:])
    i = buf.find(b'\r\n')
    if i < 0:
        return None, buf
    n, p, args = int(buf[1:i]), i + 2, []
    for _ in range(n):
        j = buf.find(b'\r\n', p)
        if j < 0:
            return None, buf
        ln, s = int(buf[p + 1:j]), j + 2
        if len(buf) < s + ln + 2:
            return None, buf
        args.append(buf[s:s + ln])
        p = s + ln + 2
    return args, buf[p:]
