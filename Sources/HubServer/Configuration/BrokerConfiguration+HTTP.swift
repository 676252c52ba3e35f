import Yams

extension BrokerConfiguration {
    /// The keys of `http`.
    public static let httpKeys = ["cors"]
    /// The keys of `http.cors`.
    public static let corsKeys = ["origins"]

    /// Reads the `http` section: `cors.origins`, the origins whose pages may call the
    /// HTTP API from a browser (each `scheme://host[:port]`, or `*`).
    mutating func readHTTP(_ http: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) {
        let fields = try reader.fields(http.value, http.path, allowed: BrokerConfiguration.httpKeys)
        guard let cors = fields["cors"] else { return }
        let corsFields = try reader.fields(cors.value, cors.path, allowed: BrokerConfiguration.corsKeys)
        guard let origins = corsFields["origins"] else { return }
        var allowed: [String] = []
        for item in try reader.items(origins.value, origins.path) {
            let origin = try reader.string(item.node, item.path)
            if let problem = CrossOriginPolicy.problem(with: origin) {
                throw reader.error(item.node, item.path, "'\(origin)': \(problem)")
            }
            allowed.append(origin)
        }
        service.crossOrigin = CrossOriginPolicy(origins: allowed)
    }
}
