// Node.js (the host's), host vs partition (tests/tests/programs.rs): an HTTP
// server and 50 client requests, fs promises, a Unix socket echo, a timer.
// Prints only deterministic results.
const http = require('http'), fs = require('fs'), crypto = require('crypto'), net = require('net'), os = require('os');
const srv = http.createServer((req, res) => { res.end('hello ' + req.url); });
srv.listen(0, '127.0.0.1', async () => {
  const port = srv.address().port;
  const got = [];
  await Promise.all([...Array(50).keys()].map(i => new Promise((ok, bad) => {
    http.get({host: '127.0.0.1', port, path: '/n' + i}, r => { let b = ''; r.on('data', d => b += d); r.on('end', () => { got.push(b); ok(); }); }).on('error', bad);
  })));
  got.sort();
  console.log('http', got.length, crypto.createHash('sha256').update(got.join()).digest('hex').slice(0, 16));
  srv.close();
  fs.writeFileSync('f.txt', 'x'.repeat(100000));
  const data = await fs.promises.readFile('f.txt');
  console.log('fs', data.length); fs.unlinkSync('f.txt');
  try { fs.unlinkSync('u.sock'); } catch (e) {}
  const us = net.createServer(c => c.pipe(c)).listen('u.sock', () => {
    const c = net.connect('u.sock', () => c.write('unix ping'));
    c.on('data', d => { console.log('unix', d.toString()); c.end(); us.close(); });
  });
  setTimeout(() => console.log('timer ok', os.cpus().length > 0), 50);
});
