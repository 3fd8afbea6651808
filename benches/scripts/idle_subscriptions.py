#!/usr/bin/env python3
"""Node memory per idle subscription, with a client that reads.

Starts the node given (`--dev`), opens CONNECTIONS WebSockets with PER subscriptions each on a
topic nobody submits on, reading every answer, one connection at a time (each waits until its
replays have come, at most 10 s), then prints the growth of the node's RssAnon per
subscription 3 s and 20 s after the last one opened. Usage:

    python3 benches/scripts/idle_subscriptions.py target/release/statement-node 20 1000 drain [CHUNK]

`never` instead of `drain` leaves the answers unread (what `subscribers --filter idle` does).
"""
import socket, time, os, sys, threading, subprocess
node=sys.argv[1]; n_conn=int(sys.argv[2]); per=int(sys.argv[3]); drain=sys.argv[4]=="drain"
# Subscribe calls sent at once on a connection (with `drain`, the next batch waits for the
# replays of the last); default all of them.
chunk=int(sys.argv[5]) if len(sys.argv)>5 else per
port=39000+os.getpid()%500
p=subprocess.Popen([node,"--dev","--rpc-max-connections","1000","--rpc-port",str(port),"--listen-addr","/ip4/127.0.0.1/tcp/0"],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
def status(field):
    for l in open("/proc/%d/status"%p.pid):
        if l.startswith(field+":"): return int(l.split()[1])
def rss(): return status("RssAnon")
for _ in range(200):
    try: socket.create_connection(("127.0.0.1",port)).close(); break
    except OSError: time.sleep(0.1)
time.sleep(1)
before=rss()
conns=[]
topic="ee"*32
counts={}
def reader(s):
    counts[s]=0; tail=b""
    try:
        while True:
            b=s.recv(65536)
            if not b: break
            counts[s]+=b.count(b'remaining')
    except OSError: pass
for c in range(n_conn):
    s=socket.create_connection(("127.0.0.1",port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    buf=b""
    while b"\r\n\r\n" not in buf: buf+=s.recv(1)
    if drain: threading.Thread(target=reader,args=(s,),daemon=True).start()
    conns.append(s)
    for first in range(0,per,chunk):
        frames=b""
        for i in range(first,min(per,first+chunk)):
            req=('{"jsonrpc":"2.0","id":%d,"method":"statement_subscribeStatement","params":[{"matchAll":["0x%s"]}]}'%(i,topic)).encode()
            mask=b"\x01\x02\x03\x04"; n=len(req)
            hdr=bytes([0x81,0x80|126,n>>8,n&255]) if n>125 else bytes([0x81,0x80|n])
            frames+=hdr+mask+bytes(b^mask[j%4] for j,b in enumerate(req))
        s.sendall(frames)
        if drain:
            t0=time.time()
            want=min(per,first+chunk)
            while counts.get(s,0)<want*0.99 and time.time()-t0<10: time.sleep(0.01)
total=n_conn*per
time.sleep(3)
print("replays seen", sum(counts.values()))
# 3 s after the last subscription, and again once the allocator has had time to return what
# the subscribing itself used (jemalloc purges unused pages after 10 s).
for waited in (3, 20):
    if waited > 3: time.sleep(waited-3)
    after=rss()
    print(f"{'draining' if drain else 'never reading'}: {total} subscriptions, {waited} s after: RssAnon {before} -> {after} KiB: {(after-before)/total:.2f} KiB each ({status('Threads')} threads)")
p.kill()
