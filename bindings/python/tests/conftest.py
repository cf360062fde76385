"""Fixtures: every test runs once per store.

The sqlite store lives in a temporary directory; the others come from
DLOCK_TEST_REDIS_URL, DLOCK_TEST_POSTGRES_URL, DLOCK_TEST_MYSQL_URL,
DLOCK_TEST_REDIS_SENTINEL_URL, DLOCK_TEST_REDIS_CLUSTER_URL and
DLOCK_TEST_ETCD_URL.  A store
whose URL is not set is skipped, except with CI=true, where it fails.
"""
import os
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import dlock  # noqa: E402

STORES = {
    "sqlite": None,
    "redis": "DLOCK_TEST_REDIS_URL",
    "postgres": "DLOCK_TEST_POSTGRES_URL",
    "mysql": "DLOCK_TEST_MYSQL_URL",
    "redis-sentinel": "DLOCK_TEST_REDIS_SENTINEL_URL",
    "redis-cluster": "DLOCK_TEST_REDIS_CLUSTER_URL",
    "etcd": "DLOCK_TEST_ETCD_URL",
}


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory):
    return "sqlite://" + str(tmp_path_factory.mktemp("dlock") / "locks.db")


@pytest.fixture(scope="session", params=list(STORES))
def url(request, sqlite_url):
    kind = request.param
    if STORES[kind] is None:
        return sqlite_url
    u = os.environ.get(STORES[kind])
    if not u:
        msg = "%s is not set" % STORES[kind]
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " (CI=true: a missing store is a failure)")
        pytest.skip(msg)
    return u


@pytest.fixture
def kind(url):
    return url.split(":", 1)[0]


@pytest.fixture
def store(url):
    with dlock.Store(url) as s:
        yield s


@pytest.fixture
def name():
    """A fresh lock name per test, so tests never see each other's locks."""
    return "pytest-" + uuid.uuid4().hex[:16]


@pytest.fixture(scope="session")
def cli():
    """The dlock command (test.sh's second argument), or None."""
    return os.environ.get("DLOCK_CLI") or None


@pytest.fixture(scope="session")
def helper():
    return os.path.join(HERE, "helper.py")
