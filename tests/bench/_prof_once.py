import tempfile, sys
from pathlib import Path
import tests.env  # noqa
import psycopg, redis
from tests.bench import team as T
from tests.e2e.conftest import POSTGRES, REDIS, Site, scratch_database

def main():
    admin = psycopg.connect(POSTGRES, autocommit=True, connect_timeout=3)
    redis.Redis.from_url(REDIS).flushdb()
    with tempfile.TemporaryDirectory() as tmp, admin, scratch_database(admin, "nexus_bench") as db_url:
        tmp = Path(tmp)
        first = Site.prepared(tmp, DATABASE_URL=db_url, REDIS_URL=REDIS, **T.LOAD)
        second = Site(first.env, tmp)
        sites = [first, second]
        try:
            workers = [first.start_worker(), first.start_worker()]
            first.start_web(); second.start_web()
            people = T.teammates(sites)
            for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
                print("\n".join(T.load("team", sites, workers, db_url, people, alone_runs=3)), flush=True)
        finally:
            for s in reversed(sites): s.stop()
main()
