"""The host's Python 3 with its standard library, host vs partition
(tests/tests/programs.rs): SQLite in WAL mode, Unix sockets (a 100 KB
sendall before the first read), select, memfd_create + mmap, a process-
directed signal taken by sigtimedwait, threads, temporary directories,
socket pairs, errno names, uname. Prints only deterministic results."""
import os, sys, json, sqlite3, socket, select, threading, mmap, signal, time, tempfile, hashlib, zlib, struct, errno
out = []
def p(*a): print(" ".join(str(x) for x in a), flush=True)
# sqlite with WAL and locking
db = sqlite3.connect("t.db"); db.execute("pragma journal_mode=wal"); db.execute("create table if not exists t(a,b)")
db.executemany("insert into t values(?,?)", [(i, str(i)*3) for i in range(5000)]); db.commit()
p("sqlite", db.execute("select count(*), sum(a) from t").fetchone()); db.close(); os.remove("t.db")
for f in ("t.db-wal", "t.db-shm"):
    if os.path.exists(f): os.remove(f)
# unix sockets
path = "py.sock"
if os.path.exists(path): os.remove(path)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); srv.bind(path); srv.listen(4)
cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); cli.connect(path)
con, addr = srv.accept(); cli.sendall(b"x" * 100000)
got = b""
while len(got) < 100000: got += con.recv(65536)
p("unix", len(got), repr(addr), srv.getsockname())
r, w, x = select.select([con], [cli], [], 0); p("select", len(r), len(w))
cli.close(); p("eof", con.recv(10)); con.close(); srv.close(); os.remove(path)
# memfd + mmap
fd = os.memfd_create("py", os.MFD_CLOEXEC); os.ftruncate(fd, 8192)
m1 = mmap.mmap(fd, 8192); m2 = mmap.mmap(fd, 8192); m1[100:105] = b"hello"; p("memfd", m2[100:105], os.pread(fd, 5, 100), os.fstat(fd).st_size)
m1.close(); m2.close(); os.close(fd)
# signals
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGUSR1)).start()
info = signal.sigtimedwait([signal.SIGUSR1], 5); p("sigtimedwait", info.si_signo == signal.SIGUSR1)
p("sigtimedwait none", signal.sigtimedwait([signal.SIGUSR1], 0.01))
# threads + hashing
res = {}
def work(k): res[k] = hashlib.sha256(zlib.compress(bytes(range(256)) * 1000 * (k + 1))).hexdigest()[:16]
ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]; p("threads", sorted(res.items())[:2])
# tempfile, dirs
with tempfile.TemporaryDirectory(dir=".") as d:
    for i in range(50): open(os.path.join(d, "f%d" % i), "w").write("x" * i)
    p("tempdir", len(os.listdir(d)), sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)))
# socketpair + pipes + errors
a, b = socket.socketpair(); a.send(b"pair"); p("pair", b.recv(4)); a.close(); b.close()
try: os.open("/nonexistent/x", os.O_RDONLY)
except OSError as e: p("errno", errno.errorcode[e.errno])
p("uname", os.uname().sysname, os.uname().nodename == socket.gethostname())

