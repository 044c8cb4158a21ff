import SaveKit

/// A batch migration in place keeps its originals in a bundle beside each folder or file given.
extension OriginalsKeeper: OriginalsKeeping {}
