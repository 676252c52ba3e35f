import CSQLite
import CSQLiteVFS
import DequeModule
import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire

extension SQLiteStore {
    /// When a commit counts as stored.
    public enum Sync: String, Sendable, CaseIterable {
        /// fsync at every group commit: survives a power loss.
        case full
        /// Written to the operating system at every group commit, fsynced at checkpoints:
        /// survives a crash of the broker, not of the machine.
        case normal
    }

    /// When the WAL is copied into the database (see ``SQLiteCheckpointer``), in pages of
    /// the WAL: by default 4 MiB and 32 MiB of the database's pages (4 KiB for a database
    /// this broker creates; 16 KiB for one an earlier version created).
    public struct Checkpointing: Sendable, Equatable {
        /// Once this many pages were added to the WAL since the last checkpoint, a thread of
        /// the store checkpoints in the background (`nil`: 4 MiB of pages, as SQLite's
        /// default of 1,000 4-KiB pages).
        public var backgroundPages: Int32?
        /// From this many, the writer checkpoints right after its commit, holding that
        /// commit's acks: the background has fallen behind (`nil`: 32 MiB of pages). It
        /// bounds the WAL.
        public var inlinePages: Int32?

        /// Background checkpoints from `backgroundPages`, inline ones from `inlinePages`.
        public init(backgroundPages: Int32? = nil, inlinePages: Int32? = nil) {
            self.backgroundPages = backgroundPages.map { max(1, $0) }
            self.inlinePages = inlinePages.map { max(1, $0) }
        }

        /// The thresholds in pages of `pageSize` bytes.
        func pages(ofSize pageSize: Int) -> (background: Int32, inline: Int32) {
            let size = max(512, pageSize)
            return (backgroundPages ?? Int32(clamping: (4 << 20) / size), inlinePages ?? Int32(clamping: (32 << 20) / size))
        }
    }
}
