/// A command that streams bundles (export, import, backups) through a few threads of its own,
/// and must stay within a flat memory bound whatever their size: it runs with one malloc arena
/// (``SaveTool/main()``).
protocol StreamsBundles {}

extension Export: StreamsBundles {}
extension Import: StreamsBundles {}
extension BackupCreate: StreamsBundles {}
extension BackupVerify: StreamsBundles {}
extension BackupList: StreamsBundles {}
extension BackupPrune: StreamsBundles {}
