import Foundation
import HubEngine
import HubRegistry
import HubServer
import HubWire
import NetworkTestSupport
import Testing

/// Every pipeline text shown to a user compiles, with the broker's own configuration
/// reader and pipeline compiler, against a broker configured like its example:
///
/// - fenced blocks tagged `pipeline` in the repository's Markdown (one pipeline a line;
///   a line that starts with white space continues the one before; `config=PATH`, relative
///   to the page, names the configuration to compile against);
/// - the tables after a `<!-- pipeline examples: sources|operators[; hub.yml: YAML] -->`
///   comment (PIPELINES.md): the first code span of each row's example column, an
///   operator after an upstream `input` unless it has one, a source that reads `.`
///   inside a `flatMap` (where `.` is a value);
/// - `--pipeline '…'` in the Markdown, the examples' scripts and `hubcli`'s help, and the
///   `pipeline: "…"`, `pipeline="…"` and `"pipeline": "…"` strings of the Markdown;
/// - the dashboard playground's text and placeholder;
/// - every `hub.yml` in the repository and every block tagged `yaml hub.yml`, parsed
///   and checked as `hubcli serve --check-config` does (which compiles their pipelines).
///
/// Without a configuration a text compiles against the embedded defaults (names are
/// created on first use). See docs/contributing.md, "Docs that cannot rot".
@Suite("Documented pipelines")
struct DocumentedPipelineTests {
    static let root = HubCLIExecutable.packageRoot

    /// A pipeline text found in the repository.
    struct Sample: CustomStringConvertible {
        /// The text.
        var text: String
        /// Where it was found: `PATH:LINE`.
        var place: String
        /// The configuration to compile it against: a YAML text and the file it names.
        var configuration: (yaml: String, file: String)?
        var description: String { "\(place): \(text)" }
    }

    /// A configuration found in the repository.
    struct ConfigurationSample {
        var yaml: String
        var file: String
        var place: String
    }

    // MARK: Finding them

    /// The repository's files whose name ends with one of `suffixes`, under `folder`.
    static func files(under folder: String = "", endingWith suffixes: [String]) -> [URL] {
        let base = folder.isEmpty ? root : root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(
            at: base, includingPropertiesForKeys: [.isDirectoryKey], options: [.skipsHiddenFiles])
        else { return [] }
        var found: [URL] = []
        for case let url as URL in walker {
            let name = url.lastPathComponent
            if (try? url.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true {
                if ["node_modules", "dist", "Packages"].contains(name) { walker.skipDescendants() }
                continue
            }
            if suffixes.contains(where: { name.hasSuffix($0) }) { found.append(url) }
        }
        return found.sorted { $0.path < $1.path }
    }

    static func relative(_ url: URL) -> String {
        String(url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count + 1))
    }

    static func read(_ url: URL) throws -> String { try String(contentsOf: url, encoding: .utf8) }

    /// The line number of `offset` in `text`.
    static func line(of offset: String.Index, in text: String) -> Int {
        text[..<offset].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
    }

    /// A fenced block of a Markdown file: its info string, first line number and lines.
    struct Fence {
        var info: [String]
        var line: Int
        var lines: [String]
    }

    static func fences(in text: String) -> [Fence] {
        var found: [Fence] = []
        var open: (marker: String, fence: Fence)?
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == " " }
            let marker = String(trimmed.prefix { $0 == "`" || $0 == "~" })
            if var current = open {
                if marker.count >= current.marker.count, marker.first == current.marker.first,
                   trimmed.trimmingCharacters(in: .whitespaces) == marker
                {
                    found.append(current.fence)
                    open = nil
                } else {
                    current.fence.lines.append(String(line))
                    open = current
                }
            } else if marker.count >= 3, Set(marker).count == 1 {
                let info = trimmed.dropFirst(marker.count).split(separator: " ").map(String.init)
                open = (marker, Fence(info: info, line: index + 2, lines: []))
            }
        }
        return found
    }

    /// `key=value` words of an info string.
    static func attribute(_ name: String, in info: [String]) -> String? {
        info.first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
    }

    /// The texts of the fenced `pipeline` blocks of one Markdown file.
    static func pipelineBlocks(in url: URL) throws -> [Sample] {
        let text = try read(url)
        var samples: [Sample] = []
        for fence in fences(in: text) where fence.info.first == "pipeline" {
            var configuration: (yaml: String, file: String)?
            if let path = attribute("config", in: fence.info) {
                let file = url.deletingLastPathComponent().appendingPathComponent(path)
                configuration = (try read(file), file.path)
            }
            var current: (text: String, line: Int)?
            for (offset, line) in fence.lines.enumerated() {
                if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
                if line.first == " " || line.first == "\t", current != nil {
                    current!.text += "\n" + line
                    continue
                }
                if let done = current {
                    samples.append(Sample(text: done.text, place: "\(relative(url)):\(done.line)", configuration: configuration))
                }
                current = (line, fence.line + offset)
            }
            if let done = current {
                samples.append(Sample(text: done.text, place: "\(relative(url)):\(done.line)", configuration: configuration))
            }
        }
        return samples
    }

    /// Texts that follow a pattern anywhere in a file: `--pipeline '…'` and the clients'
    /// `pipeline` strings. Placeholders (`...`, `…`) are not pipelines.
    static func quoted(in url: URL, patterns: [String]) throws -> [Sample] {
        let text = try read(url)
        var samples: [Sample] = []
        for pattern in patterns {
            let expression = try Regex(pattern)
            for match in text.matches(of: expression) {
                guard let captured = match.output[1].substring else { continue }
                var found = String(captured)
                if pattern.contains("\"pipeline\"") {
                    // A JSON string: its escapes.
                    found = (try? JSONDecoder().decode(String.self, from: Data("\"\(found)\"".utf8))) ?? found
                }
                if ["...", "…"].contains(found.trimmingCharacters(in: .whitespaces)) { continue }
                samples.append(Sample(text: found, place: "\(relative(url)):\(line(of: match.range.lowerBound, in: text))"))
            }
        }
        return samples
    }

    static let commandLinePatterns = [#"--pipeline\s+'([^']*)'"#, #"--pipeline\s+"([^"]*)""#]
    static let clientPatterns = [
        #"[{,]\s*pipeline:\s*"([^"]*)""#,           // JavaScript: { pipeline: "…" }
        #"\bpipeline="([^"]*)""#,                     // Python: pipeline="…"
        #""pipeline"\s*:\s*"((?:[^"\\]|\\.)*)""#,    // JSON: "pipeline": "…"
    ]

    /// The example column of the tables a `<!-- pipeline examples: … -->` comment marks.
    static func tableExamples(in url: URL) throws -> [Sample] {
        let text = try read(url)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var samples: [Sample] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            guard let start = line.range(of: "<!-- pipeline examples: "), let end = line.range(of: "-->") else {
                index += 1
                continue
            }
            let marker = line[start.upperBound..<end.lowerBound].trimmingCharacters(in: .whitespaces)
            let parts = marker.components(separatedBy: "; hub.yml: ")
            let kind = parts[0].trimmingCharacters(in: .whitespaces)
            let configuration = parts.count > 1 ? (parts[1], "\(relative(url)):\(index + 1)") : nil
            // The table: the first line starting with '|' after the marker, to the first that does not.
            index += 1
            while index < lines.count, !lines[index].hasPrefix("|") { index += 1 }
            let header = cells(of: lines[index])
            let column = header.firstIndex(of: "example") ?? 1
            index += 2  // the header and its rule
            while index < lines.count, lines[index].hasPrefix("|") {
                let row = cells(of: lines[index])
                if column < row.count, let example = firstCodeSpan(row[column]) {
                    samples.append(Sample(
                        text: kind == "operators" ? afterUpstream(example) : inValueContext(example),
                        place: "\(relative(url)):\(index + 1)", configuration: configuration))
                }
                index += 1
            }
        }
        return samples
    }

    /// A table row's cells, split on pipes that are not escaped, `\|` unescaped.
    static func cells(of line: String) -> [String] {
        var cells: [String] = []
        var cell = ""
        var previous: Character = " "
        for character in line.dropFirst() {
            if character == "|", previous != "\\" {
                cells.append(cell.trimmingCharacters(in: .whitespaces))
                cell = ""
            } else {
                cell.append(character)
            }
            previous = character
        }
        return cells.map { $0.replacingOccurrences(of: "\\|", with: "|") }
    }

    static func firstCodeSpan(_ cell: String) -> String? {
        guard let open = cell.firstIndex(of: "`") else { return nil }
        let rest = cell[cell.index(after: open)...]
        guard let close = rest.firstIndex(of: "`") else { return nil }
        return String(rest[..<close])
    }

    /// An operator's example as a whole pipeline: after `input` unless it starts with its
    /// own upstream (a `|` outside parentheses, brackets and strings).
    static func afterUpstream(_ example: String) -> String {
        var depth = 0
        var inString = false
        var previous: Character = " "
        for character in example {
            if inString {
                if character == "\"", previous != "\\" { inString = false }
            } else if character == "\"" {
                inString = true
            } else if "([{".contains(character) {
                depth += 1
            } else if ")]}".contains(character) {
                depth -= 1
            } else if character == "|", depth == 0 {
                return example
            }
            previous = character
        }
        return "input | " + example
    }

    /// A source's example; one that reads `.` (a value only inside `flatMap` and
    /// `switchToLatest`, section 7) inside a `flatMap`.
    static func inValueContext(_ example: String) -> String {
        readsTheValue(example) ? #"just("x") | flatMap("# + example + ")" : example
    }

    /// Whether `text` reads the current value `.` itself (not a field `.a`, an index
    /// `.[0]`, a decimal point or a dot inside a string).
    static func readsTheValue(_ text: String) -> Bool {
        let characters = Array(text)
        var inString = false
        for (index, character) in characters.enumerated() {
            if inString {
                if character == "\"", characters[index - 1] != "\\" { inString = false }
                continue
            }
            if character == "\"" { inString = true; continue }
            guard character == "." else { continue }
            let before = index > 0 ? characters[index - 1] : " "
            let after = index + 1 < characters.count ? characters[index + 1] : " "
            let isPart = { (c: Character) in c.isLetter || c.isNumber || c == "_" }
            if isPart(before) || ")]\"".contains(before) { continue }
            if isPart(after) || after == "[" { continue }
            return true
        }
        return false
    }

    /// The dashboard playground's text and placeholder.
    static func dashboard() throws -> [Sample] {
        let url = root.appendingPathComponent("Dashboard/index.html")
        let text = try read(url)
        var samples: [Sample] = []
        for match in text.matches(of: try Regex(#"<textarea name="pipeline"([^>]*)>([^<]*)</textarea>"#)) {
            let place = "\(relative(url)):\(line(of: match.range.lowerBound, in: text))"
            if let content = match.output[2].substring, !content.isEmpty {
                samples.append(Sample(text: decodeEntities(String(content)), place: place))
            }
            if let attributes = match.output[1].substring,
               let placeholder = String(attributes).firstMatch(of: try Regex(#"placeholder="([^"]*)""#))?.output[1].substring
            {
                samples.append(Sample(text: decodeEntities(String(placeholder)), place: place + " (placeholder)"))
            }
        }
        return samples
    }

    static func decodeEntities(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }

    /// Every pipeline text shown to a user.
    static func samples() throws -> [Sample] {
        var samples: [Sample] = []
        for page in files(endingWith: [".md"]) {
            samples += try pipelineBlocks(in: page)
            samples += try tableExamples(in: page)
            samples += try quoted(in: page, patterns: commandLinePatterns + clientPatterns)
        }
        for script in files(under: "examples", endingWith: [".sh"]) + files(under: "Sources/hubcli", endingWith: [".swift"]) {
            samples += try quoted(in: script, patterns: commandLinePatterns)
        }
        samples += try dashboard()
        return samples
    }

    /// Every configuration shown to a user: the `hub.yml` files and the `yaml hub.yml` blocks.
    static func configurations() throws -> [ConfigurationSample] {
        var found = try files(endingWith: ["hub.yml"]).map {
            ConfigurationSample(yaml: try read($0), file: $0.path, place: relative($0))
        }
        for page in files(endingWith: [".md"]) {
            for fence in fences(in: try read(page)) where fence.info.first == "yaml" && fence.info.dropFirst().contains("hub.yml") {
                let place = "\(relative(page)):\(fence.line)"
                found.append(ConfigurationSample(
                    yaml: fence.lines.joined(separator: "\n"), file: page.deletingLastPathComponent().appendingPathComponent("hub.yml").path,
                    place: place))
            }
        }
        return found
    }

    // MARK: Compiling them

    /// A hub configured by `yaml` (its durable subjects on a store in memory), as
    /// `--check-config` makes one.
    static func hub(_ yaml: String, file: String) throws -> Hub {
        let configuration = try parseBroker(yaml: yaml, file: file)
        let hub = Hub(
            configuration: configuration.service.hub, scheduler: ImmediateScheduler.shared,
            durableStore: configuration.service.storage == nil ? nil : MemoryStore())
        try configuration.declare(in: hub)
        return hub
    }

    @Test func everyPipelineShownToAUserCompiles() throws {
        let samples = try Self.samples()
        // The extraction finds what the pages show: a broken marker fails here, not silently.
        #expect(samples.count >= 90, "only \(samples.count) pipeline texts found")
        #expect(samples.contains { $0.place.hasPrefix("Dashboard/index.html") && $0.place.hasSuffix("(placeholder)") })
        #expect(samples.contains { $0.place.hasPrefix("Protocol/PIPELINES.md") && $0.text.hasPrefix("input | ") })
        #expect(samples.contains { $0.place.hasPrefix("docs/getting-started.md") })
        #expect(samples.contains { $0.place.hasPrefix("Sources/hubcli/") })
        var hubs: [String: Hub] = [:]
        for sample in samples {
            let (yaml, file) = sample.configuration ?? ("", "hub.yml")
            do {
                let hub = try hubs[yaml] ?? Self.hub(yaml, file: file)
                hubs[yaml] = hub
                _ = try hub.compile(pipeline: sample.text)
            } catch {
                Issue.record("\(sample.place): the pipeline does not compile: \(sample.text)\n\(error)")
            }
        }
    }

    @Test func everyConfigurationShownToAUserChecks() throws {
        let configurations = try Self.configurations()
        #expect(configurations.count >= 10, "only \(configurations.count) configurations found")
        for sample in configurations {
            do {
                try parseBroker(yaml: sample.yaml, file: sample.file).check()
            } catch {
                Issue.record("\(sample.place): the configuration does not check: \(error)")
            }
        }
    }

    /// The extraction itself, on text made for it: continuation lines, configurations,
    /// operators with and without their upstream, placeholders.
    @Test func theExtractionReadsTheMarkers() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docs-pipelines-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("pipelines:\n  page: \"just(.)\"\n".utf8).write(to: folder.appendingPathComponent("c.yml"))
        let page = folder.appendingPathComponent("page.md")
        try Data("""
            ```pipeline config=c.yml
            page(1) | map(.)

            merge(a,
                  b)
            ```
            <!-- pipeline examples: operators -->

            | operator | example |
            |---|---|
            | `map(e)` | `map(.x)` — text |
            | `merge` | `a \\| merge(b)` |
            | `prepend` | `prepend(s \\| first())` |

            hubcli subscribe --pipeline 'sequence([1])' and { pipeline: "..." }

            """.utf8).write(to: page)
        let blocks = try Self.pipelineBlocks(in: page)
        #expect(blocks.map(\.text) == ["page(1) | map(.)", "merge(a,\n      b)"])
        #expect(blocks.allSatisfy { $0.configuration?.yaml == "pipelines:\n  page: \"just(.)\"\n" })
        #expect(try Self.tableExamples(in: page).map(\.text) == ["input | map(.x)", "a | merge(b)", "input | prepend(s | first())"])
        #expect(try Self.quoted(in: page, patterns: Self.commandLinePatterns + Self.clientPatterns).map(\.text) == ["sequence([1])"])
        #expect(Self.inValueContext(#"subject("medias." + .)"#) == #"just("x") | flatMap(subject("medias." + .))"#)
        #expect(Self.inValueContext("sequence([1.5, 2])") == "sequence([1.5, 2])")
    }
}
