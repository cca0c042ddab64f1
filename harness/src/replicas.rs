//! Replicas: real ones, and a fake one that records the replication
//! stream.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use redis::Connection;

use crate::*;

/// Starts a replica of `primary` (module loaded or not, per `config`) and
/// waits until its link is up and the initial sync is done.
pub fn start_replica(primary: &Server, config: ServerConfig) -> Server {
    let replica = config
        .line(&format!("replicaof 127.0.0.1 {}", primary.port()))
        .start();
    let mut con = replica.client();
    let up = eventually(std::time::Duration::from_secs(20), || {
        info_field(&mut con, "replication", "master_link_status").as_deref() == Some("up")
    });
    assert!(up, "replica never synced; its log:\n{}", replica.log());
    replica
}

/// Blocks until every write so far reached `replicas` replicas.
pub fn wait_for_replicas(primary: &mut Connection, replicas: i64) {
    let acked: i64 = q(primary, &["WAIT", &replicas.to_string(), "10000"]);
    assert!(acked >= replicas, "only {acked} replicas acknowledged");
}

/// A raw connection that speaks as a replica: sends `line`, e.g.
/// `PSYNC ? -1`, and reads what the primary streams back.
pub struct FakeReplica {
    stream: TcpStream,
}

impl FakeReplica {
    pub fn connect(server: &Server, line: &str) -> FakeReplica {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        // A diskless-capable replica, as real ones announce themselves: the
        // primary then waits `repl-diskless-sync-delay` before it forks.
        stream
            .write_all(b"REPLCONF capa eof capa psync2\r\n")
            .expect("send");
        let mut replica = FakeReplica { stream };
        let ok = replica.line();
        assert_eq!(ok, "+OK", "REPLCONF");
        replica
            .stream
            .write_all(format!("{line}\r\n").as_bytes())
            .expect("send");
        replica
    }

    /// Reads one line (without its CRLF), skipping the newlines a primary
    /// sends to keep a waiting replica alive.
    pub fn line(&mut self) -> String {
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            use std::io::Read;
            self.stream.read_exact(&mut byte).expect("read a line");
            if byte[0] == b'\n' {
                if line.is_empty() || line == b"\r" {
                    line.clear();
                    continue;
                }
                line.pop();
                return String::from_utf8_lossy(&line).into_owned();
            }
            line.push(byte[0]);
        }
    }

    /// Reads exactly `len` bytes of the stream.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        use std::io::Read;
        let mut buf = vec![0u8; len];
        self.stream.read_exact(&mut buf).expect("read the stream");
        buf
    }
}
