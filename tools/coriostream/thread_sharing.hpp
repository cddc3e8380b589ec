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
    /// thread: --streams, or --loopback with a thread for each half of
    /// every stream.
    other_streams,
    /// The peers' own halves, on the same threads, and fewer threads than
    /// halves (--loopback, as on one thread): a peer may be queued behind
    /// this stream for a thread, and no answer can come from it until this
    /// stream lets the thread go.
    peer_on_these_threads,
};

} // namespace coriostream
