#pragma once

namespace coriostream {

/// What else runs on the threads that run a stream's I/O. It bounds how long
/// a busy call that would block is made again, and how many looks a marker
/// wait makes, before the stream lets the rest of its io_context run.
enum class thread_sharing {
    /// One stream, its peer in another process (no --streams, no
    /// --loopback): nothing else on its threads needs a turn within
    /// microseconds.
    stream_alone,
    /// Other streams, whose peers can answer while this one holds its
    /// thread: --streams, or --loopback over two threads or more.
    other_streams,
    /// The peer's own half, on the one thread that runs both (--loopback
    /// with --threads 1): no answer can come until this stream lets the
    /// thread go.
    peer_on_this_thread,
};

} // namespace coriostream
