//! A batch's body — the OpenAI input file (JSONL) or the Anthropic create request
//! (`{"requests":[…]}`) — spooled to a temporary file as its lines come, and sent from there.
//!
//! A provider batch holds up to 200 MB (OpenAI) or 256 MB (Anthropic): a coordinator that built
//! it in memory would hold it, plus the lines it was built from, for as long as the upload
//! takes, and build it again for a retried create. On disk it costs a write and a read; the
//! coordinator's memory stays a page of lines.

use std::io::{self, BufWriter, Write};

use evalfleet_config::Api;
use tempfile::{NamedTempFile, TempPath};

/// The bytes a batch of encoded lines is sent as, beyond the lines themselves.
pub fn framing_bytes(api: Api, lines: usize) -> usize {
    match api {
        // A newline after each line.
        Api::Openai => lines,
        // `{"requests":[` + commas + `]}`.
        Api::Anthropic => 13 + lines.saturating_sub(1) + 2,
    }
}

/// Writes a batch body line by line; [`BodyWriter::finish`] closes it.
pub struct BodyWriter {
    api: Api,
    out: BufWriter<NamedTempFile>,
    len: u64,
    requests: usize,
}

impl BodyWriter {
    pub fn new(api: Api) -> io::Result<Self> {
        let mut writer = BodyWriter {
            api,
            out: BufWriter::with_capacity(1 << 16, NamedTempFile::new()?),
            len: 0,
            requests: 0,
        };
        if api == Api::Anthropic {
            writer.write(b"{\"requests\":[")?;
        }
        Ok(writer)
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Adds one encoded line (a request).
    pub fn push(&mut self, line: &[u8]) -> io::Result<()> {
        match self.api {
            Api::Openai => {
                self.write(line)?;
                self.write(b"\n")?;
            }
            Api::Anthropic => {
                if self.requests > 0 {
                    self.write(b",")?;
                }
                self.write(line)?;
            }
        }
        self.requests += 1;
        Ok(())
    }

    /// Requests pushed so far.
    pub fn requests(&self) -> usize {
        self.requests
    }

    pub fn finish(mut self) -> io::Result<BatchBody> {
        if self.api == Api::Anthropic {
            self.write(b"]}")?;
        }
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        Ok(BatchBody {
            path: file.into_temp_path(),
            len: self.len,
            requests: self.requests,
        })
    }
}

/// A finished batch body on disk (deleted when dropped).
pub struct BatchBody {
    path: TempPath,
    len: u64,
    requests: usize,
}

impl BatchBody {
    /// The body of these lines.
    pub fn of<L: AsRef<[u8]>>(api: Api, lines: &[L]) -> io::Result<Self> {
        let mut writer = BodyWriter::new(api)?;
        for line in lines {
            writer.push(line.as_ref())?;
        }
        writer.finish()
    }

    /// Its size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.requests == 0
    }

    /// Its number of requests.
    pub fn requests(&self) -> usize {
        self.requests
    }

    /// A fresh reader of the whole body, as a request body (one per attempt). It reads 1 MiB
    /// at a time: each read of a file is a trip to tokio's blocking pool, and the default
    /// 4 KiB would make 60,000 of them for a full Anthropic batch.
    pub(super) async fn open(&self) -> io::Result<reqwest::Body> {
        let file = tokio::fs::File::open(&self.path).await?;
        let chunks = tokio_util::io::ReaderStream::with_capacity(file, 1 << 20);
        Ok(reqwest::Body::wrap_stream(chunks))
    }

    #[cfg(test)]
    pub(super) fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).expect("the spooled body")
    }
}
