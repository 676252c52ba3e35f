#if canImport(Glibc)
import Foundation
import Glibc
import HubServer
import HubValue
import Testing

/// Letting go of the pages starting touched: the ranges are the executable's mappings
/// that nothing writes, found from its program headers and checked here against what
/// the kernel says in /proc/self/maps; releasing them unmaps resident pages while
/// this process (with the other tests running beside it) runs on unharmed.
@Suite("StartupPages")
struct StartupPagesTests {
    /// One mapping of /proc/self/smaps, with its pages the process has written
    /// (`Anonymous`: copies made on write, as the loader's relocations make).
    struct Mapping {
        var range: Range<UInt>
        var permissions: String
        var path: String
        var anonymousKiB = 0
    }

    static func mappings() throws -> [Mapping] {
        // Read to the end: the file's size is 0 to stat, and String(contentsOfFile:)
        // returns what its first read gives (about 4 KB: the first few mappings).
        let file = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? file.close() }
        let bytes = try file.readToEnd() ?? Data()
        var mappings: [Mapping] = []
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.first == "Anonymous:", fields.count >= 2, !mappings.isEmpty {
                mappings[mappings.count - 1].anonymousKiB = Int(fields[1]) ?? 0
                continue
            }
            let bounds = fields.first?.split(separator: "-").compactMap { UInt($0, radix: 16) } ?? []
            guard fields.count >= 5, bounds.count == 2, fields[1].count == 4 else { continue }
            mappings.append(Mapping(
                range: bounds[0]..<bounds[1], permissions: String(fields[1]),
                path: fields.count >= 6 ? String(fields[5]) : ""))
        }
        return mappings
    }

    static func executablePath() throws -> String {
        try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    }

    /// How many pages of `ranges` are mapped in this process now (/proc/self/pagemap's
    /// present bit).
    static func presentPages(in ranges: [Range<UInt>]) throws -> Int {
        let descriptor = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        var present = 0
        for range in ranges {
            let pages = range.count / Int(page)
            var entries = [UInt64](repeating: 0, count: pages)
            let wanted = pages * 8
            let got = entries.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress, wanted, off_t(range.lowerBound / page * 8))
            }
            try #require(got == wanted)
            present += entries.filter { $0 >> 63 == 1 }.count
        }
        return present
    }

    @Test func theRangesAreTheExecutablesMappingsThatNothingWrites() throws {
        let ranges = StartupPages.readOnlySegments()
        try #require(!ranges.isEmpty)
        let executable = try Self.executablePath()
        let mappings = try Self.mappings()
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        for range in ranges {
            #expect(range.lowerBound % page == 0 && range.upperBound % page == 0)
            // Every page lies in a mapping of the executable that is not writable.
            let covering = mappings.filter { $0.range.overlaps(range) }
            #expect(!covering.isEmpty)
            for mapping in covering {
                #expect(mapping.path == executable, "\(range) overlaps \(mapping.path)")
                #expect(!mapping.permissions.contains("w"), "\(range) overlaps a writable mapping \(mapping.permissions)")
                // Nor one the loader wrote into before making it read-only (RELRO).
                #expect(mapping.anonymousKiB == 0, "\(range) overlaps \(mapping.anonymousKiB) KiB of written pages")
            }
        }
        // The code is among them: some range lies in an executable mapping.
        let code = mappings.filter { $0.path == executable && $0.permissions.hasPrefix("r-x") }
        #expect(ranges.contains { range in code.contains { $0.range.overlaps(range) } })
        // And no mapping of the executable with written pages is touched (its relocated
        // data, the GOT): there are some, and the ranges keep out of them.
        let writable = mappings.filter { $0.path == executable && $0.anonymousKiB > 0 }
        #expect(!writable.isEmpty)
        #expect(!ranges.contains { range in writable.contains { $0.range.overlaps(range) } })
    }

    @Test func releasingUnmapsResidentPagesAndTheProcessRunsOn() throws {
        // Work whose result depends on code and constants in the released pages.
        func work() -> String {
            let value = Value.object(["n": .int(42), "s": .string("ünïcode"), "a": .array([.bool(true), .null, .double(1.5)])])
            var json: [UInt8] = []
            value.writeJSON(into: &json)
            return String(decoding: json, as: UTF8.self) + String(describing: Self.self)
        }
        let before = work()
        let ranges = StartupPages.readOnlySegments()
        let residentBefore = try Self.presentPages(in: ranges)
        try #require(residentBefore > 0)
        let advised = StartupPages.release()
        let residentAfter = try Self.presentPages(in: ranges)
        #expect(advised == ranges.reduce(0) { $0 + Int($1.count) })
        #expect(residentAfter < residentBefore, "resident pages \(residentBefore) before, \(residentAfter) after")
        // The same work gives the same answer from pages mapped again.
        #expect(work() == before)
    }
}
#endif
