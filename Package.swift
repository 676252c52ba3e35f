// swift-tools-version:6.0
import PackageDescription

// No unsafe flags anywhere: other packages depend on this one by version. The
// engine's hot path is `@inlinable`, so its generic operators are specialised in
// the modules that use them without cross-module optimisation flags.

let package = Package(
    name: "ReactiveHub",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HubEngine", targets: ["HubEngine"]),
        .library(name: "HubValue", targets: ["HubValue"]),
        .library(name: "HubWire", targets: ["HubWire"]),
        .library(name: "HubPipeline", targets: ["HubPipeline"]),
        .library(name: "HubRegistry", targets: ["HubRegistry"]),
        .library(name: "HubTesting", targets: ["HubTesting"]),
        .library(name: "HubSQLite", targets: ["HubSQLite"]),
        .library(name: "HubLoop", targets: ["HubLoop"]),
        .library(name: "HubTransport", targets: ["HubTransport"]),
        .library(name: "HubServer", targets: ["HubServer"]),
        .library(name: "HubClient", targets: ["HubClient"]),
        .library(name: "HubCluster", targets: ["HubCluster"]),
        .executable(name: "hubcli", targets: ["hubcli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "5.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // MARK: the layers, bottom up

        // The loop a hub's objects are confined to, as the transport, the stores and the
        // cluster see it (`LoopExecutor`), and the one confinement wrapper (`LoopBound`).
        .target(name: "HubLoop"),

        // The engine's operators snapshot their state as a `Value` for checkpoints of
        // running pipelines (Sources/HubEngine/Checkpoint): Value is a leaf without I/O.
        .target(
            name: "HubEngine",
            dependencies: [
                "HubValue",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "HubValue",
            dependencies: [
                .product(name: "OrderedCollections", package: "swift-collections"),
            ]
        ),
        .target(
            name: "HubWire",
            dependencies: [
                "HubValue",
                .product(name: "OrderedCollections", package: "swift-collections"),
            ]
        ),
        // The calling thread's stack bounds (glibc's pthread_getattr_np, which the Glibc
        // module does not export): how deep a pipeline that nests at run time may go.
        .systemLibrary(name: "CStackBounds", path: "Sources/CStackBounds"),
        .target(
            name: "HubPipeline",
            dependencies: [
                "CStackBounds",
                "HubEngine",
                "HubValue",
                "HubWire",
                .product(name: "OrderedCollections", package: "swift-collections"),
                // Windows close in order of their ends (TimeWindows).
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "HubRegistry",
            dependencies: [
                "HubLoop",
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubPipeline",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HubTesting",
            dependencies: ["HubEngine", "HubValue", .product(name: "Logging", package: "swift-log")]
        ),
        // Durable subjects: SQLite from the system, as libwebsockets is. The store lives in
        // its own module so that a hub without durable subjects (and HubRegistry's users)
        // does not link libsqlite3, and a cluster store can sit beside it.
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The store's SQLite VFS shims, in C, registered at run time: page checksums, and
        // the fault injection (power cuts, full disks, I/O errors, slow syncs) of its tests.
        .target(name: "CSQLiteVFS", dependencies: ["CSQLite"], path: "Sources/CSQLiteVFS"),
        .target(
            name: "HubSQLite",
            dependencies: [
                "CSQLite",
                "CSQLiteVFS",
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubRegistry",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // JWT signatures (HS256, ES256, RS256) are checked with the system's libcrypto,
        // which libwebsockets links for TLS already.
        .systemLibrary(
            name: "COpenSSL",
            path: "Sources/COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CWebsockets",
            path: "Sources/CWebsockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev"])]
        ),
        .target(
            name: "HubTransport",
            dependencies: [
                "HubLoop",
                "CWebsockets",
                "HubEngine",
                "HubValue",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ]
        ),
        .target(
            name: "HubServer",
            dependencies: [
                "HubLoop",
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubPipeline",
                "HubRegistry",
                "HubTransport",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                "COpenSSL",
            ],
            // The dashboard and the JS client it serves, embedded in the binary. The files
            // are links to Dashboard/ and clients/js/hub.js (one copy of each).
            resources: [
                .embedInCode("Dashboard/index.html"),
                .embedInCode("Dashboard/dashboard.js"),
                .embedInCode("Dashboard/dashboard.css"),
                .embedInCode("Dashboard/hub.js"),
                .embedInCode("HTTP/openapi.json"),
            ]
        ),
        // The cluster's backplane: the NATS C client from the system, as libwebsockets is
        // (pkg-config libnats; apt libnats-dev). Only HubCluster (and hubcli) link it.
        .systemLibrary(
            name: "CNATS",
            path: "Sources/CNATS",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]
        ),
        .target(
            name: "HubCluster",
            dependencies: [
                "HubLoop",
                "CNATS",
                .product(name: "DequeModule", package: "swift-collections"),
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubRegistry",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HubClient",
            dependencies: [
                "HubLoop",
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubTransport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "hubcli",
            dependencies: [
                "HubLoop",
                "HubClient",
                "HubCluster",
                "HubEngine",
                "HubRegistry",
                "HubValue",
                "HubWire",
                "HubServer",
                "HubSQLite",
                "HubTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            // `hubcli --version`: VERSION is a link to the repository's VERSION file
            // (BuildInfo.swift).
            resources: [.embedInCode("VERSION")]
        ),
        .executableTarget(
            name: "hub-bench",
            dependencies: [
                "HubEngine",
                "HubPipeline",
                "HubValue",
                "HubWire",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ]
        ),

        // MARK: tests

        .target(
            name: "NetworkTestSupport",
            dependencies: [
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            path: "Tests/NetworkTestSupport"
        ),
        .target(
            name: "RemoteTestSupport",
            dependencies: ["NetworkTestSupport", "HubClient", "HubEngine", "HubValue"],
            path: "Tests/RemoteTestSupport"
        ),
        .testTarget(
            name: "HubEngineTests",
            dependencies: [
                "HubEngine",
                "HubTesting",
                "HubValue",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HubValueTests",
            dependencies: ["HubValue", "HubTesting"]
        ),
        .testTarget(
            name: "HubWireTests",
            dependencies: ["HubWire", "HubValue", "HubTesting"]
        ),
        .testTarget(
            name: "HubPipelineTests",
            dependencies: ["HubPipeline", "HubEngine", "HubValue", "HubWire", "HubTesting"]
        ),
        .testTarget(
            name: "HubRegistryTests",
            dependencies: [
                "HubRegistry", "HubPipeline", "HubEngine", "HubValue", "HubWire", "HubTesting",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HubStoreTests",
            dependencies: [
                "HubLoop",
                "NetworkTestSupport", "HubRegistry", "HubSQLite", "HubCluster", "CSQLite", "CSQLiteVFS", "HubEngine", "HubValue",
                "HubWire",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HubTransportTests",
            dependencies: [
                "HubLoop",
                "NetworkTestSupport",
                "HubTransport",
                "HubEngine",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .testTarget(
            name: "HubClientTests",
            dependencies: [
                "NetworkTestSupport",
                "RemoteTestSupport",
                "HubClient",
                "HubServer",
                "HubRegistry",
                "HubSQLite",
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubTransport",
                "hubcli",
            ]
        ),
        .testTarget(
            name: "HubServerTests",
            dependencies: [
                "HubLoop",
                "NetworkTestSupport",
                "HubServer",
                "HubRegistry",
                "HubSQLite",
                "CSQLite",
                "HubPipeline",
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubTesting",
                "HubTransport",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                "COpenSSL",
            ]
        ),
        .testTarget(
            name: "ScenarioTests",
            dependencies: [
                "NetworkTestSupport",
                "RemoteTestSupport",
                "HubServer",
                "HubClient",
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubTransport",
                "hubcli",
                "HubTesting",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HubClusterTests",
            dependencies: [
                "NetworkTestSupport",
                "RemoteTestSupport",
                "HubCluster",
                "HubClient",
                "HubServer",
                "HubRegistry",
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubTransport",
                "hubcli",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HubServerConfigTests",
            dependencies: [
                "NetworkTestSupport",
                "HubServer",
                "HubRegistry",
                "HubSQLite",
                "HubPipeline",
                "HubEngine",
                "HubValue",
                "HubWire",
                "HubTransport",
                "HubTesting",
                "hubcli",
            ]
        ),
    ]
)
