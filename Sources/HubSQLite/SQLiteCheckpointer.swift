import CSQLite
import Foundation

/// Copies the WAL into the database on a thread of its own, so that a group commit does
/// not do it (with its fsyncs) while the group's acks wait.
///
/// The writer's connection reports the WAL's size after every commit (`sqlite3_wal_hook`,
/// which takes the place of SQLite's own auto-checkpoint). From
/// ``SQLiteStore/Checkpointing/backgroundPages`` on, this thread runs a passive checkpoint
/// on its own connection: it copies what is committed into the database without holding
/// up the writer or the readers. Should it fall behind (a slow disk) until the WAL holds
/// ``SQLiteStore/Checkpointing/inlinePages``, the writer checkpoints right after its commit,
/// as SQLite's auto-checkpoint does, and that bounds the WAL. Either way the WAL starts
/// over from its beginning at the first commit after a checkpoint that copied all of it.
///
/// A checkpoint is due once `backgroundPages` pages were added *since the last one ran*,
/// not whenever the WAL is that large: under a steady stream of commits a passive
/// checkpoint seldom copies everything (commits land while it syncs), so the WAL does not
/// start over, and a size test alone would run one checkpoint, with its two fsyncs, after
/// nearly every commit. What a checkpoint leaves is copied by the next one, or by the
/// writer at the inline bound, after which the WAL starts over.
///
/// Durability is the same as with SQLite's own checkpoints: the connection checkpoints
/// with the store's `synchronous` setting.
final class SQLiteCheckpointer: @unchecked Sendable {
    private let thresholds: (background: Int32, inline: Int32)
    private let worker = StoreWorkerThread()
    // Guarded by the worker's lock.
    private var requested = false
    /// The WAL's size, in pages, when the last checkpoint ran.
    private var checkpointedAt: Int32 = 0
    private var runs = 0
    private var atInlineBound = false
    private var onLoop = false

    // The thread's own (handed over before it starts).
    private let connection: SQLiteConnection

    /// A checkpointer on its own `connection` to the store's database; not started.
    init(connection: SQLiteConnection, thresholds: (background: Int32, inline: Int32)) {
        self.connection = connection
        self.thresholds = thresholds
    }

    /// Starts the thread.
    func start(name: String) {
        worker.start(name: name) { [self] in self.run() }
    }

    /// Has the writer's `connection` report the WAL's size after each commit (instead of
    /// checkpointing by itself). The connection keeps a pointer to this object, so its
    /// owner must keep the checkpointer alive as long as it uses the connection.
    func watch(_ writer: SQLiteConnection) {
        sqlite3_wal_hook(writer.handle, walHook, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Stops the thread (a checkpoint asked for runs first), waits for it and closes its
    /// connection.
    func stop() {
        worker.stop()
        connection.close()
    }

    /// The checkpoints run so far, in the background and inline.
    var checkpoints: Int { worker.locked { runs } }

    /// Whether the last commit left the WAL at the inline bound: the next commit is the
    /// writer thread's, which checkpoints after it (the loop must not).
    var isAtInlineBound: Bool { worker.locked { atInlineBound } }

    /// Set by the writer while the loop commits: at the inline bound the WAL is left to
    /// the thread's next commit instead of being checkpointed on the loop.
    var committingOnLoop: Bool {
        get { worker.locked { onLoop } }
        set { worker.locked { onLoop = newValue } }
    }

    /// On the committing thread, after a commit left `pages` in the WAL of `database`.
    fileprivate func walGrew(to pages: Int32, database: OpaquePointer) {
        enum Next { case nothing, checkpointHere, wakeThread }
        let next = worker.locked { () -> Next in
            atInlineBound = pages >= thresholds.inline
            if atInlineBound { return onLoop ? .nothing : .checkpointHere }
            // Woken only when nothing is asked of it yet: a wake-up at every commit would
            // cost the writer a context switch each time.
            guard !requested, added(since: checkpointedAt, now: pages) >= thresholds.background else { return .nothing }
            return .wakeThread
        }
        switch next {
        case .nothing: break
        case .checkpointHere: checkpoint(database)
        case .wakeThread: worker.handIn { requested = true }
        }
    }

    /// The pages added to a WAL that held `then` and holds `now`: a WAL smaller than it
    /// was has started over since.
    private func added(since then: Int32, now: Int32) -> Int32 {
        now >= then ? now - then : now
    }

    /// A passive checkpoint on `database`, noted. Passive: copies what no reader still
    /// needs and waits for no one; a busy checkpoint (another one running) is tried again
    /// at the next threshold.
    private func checkpoint(_ database: OpaquePointer) {
        var pages: Int32 = -1
        let status = sqlite3_wal_checkpoint_v2(database, nil, SQLITE_CHECKPOINT_PASSIVE, &pages, nil)
        worker.locked {
            runs += 1
            if status == SQLITE_OK, pages >= 0 { checkpointedAt = pages }
        }
    }

    // MARK: The thread

    private func run() {
        while worker.next({ () -> Bool? in
            guard requested else { return nil }
            requested = false
            return true
        }) != nil {
            checkpoint(connection.handle)
        }
    }
}

/// The writer connection's WAL hook: hands the WAL's size to the checkpointer.
private func walHook(
    _ context: UnsafeMutableRawPointer?, _ database: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ pages: Int32
) -> Int32 {
    guard let context, let database else { return SQLITE_OK }
    Unmanaged<SQLiteCheckpointer>.fromOpaque(context).takeUnretainedValue().walGrew(to: pages, database: database)
    return SQLITE_OK
}
