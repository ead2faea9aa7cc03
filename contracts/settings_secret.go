package contracts

// SecretLookingEnv reports whether an environment variable would be
// refused in the settings as a credential (by its name or its value): such
// a variable belongs in the vault (extensions.secret {"env":{...}}). It
// applies the checks Validate applies, so an importer can move exactly
// what the settings would refuse.
func SecretLookingEnv(name, value string) bool {
	return looksSecretName(name) || looksLikeCredential(value) || urlPasswordRE.MatchString(value) || webhookURL(value) != ""
}

// SecretLookingHeader is SecretLookingEnv for a request header.
func SecretLookingHeader(name, value string) bool {
	return secretHeader(name) || looksLikeCredential(value) || urlPasswordRE.MatchString(value) || webhookURL(value) != ""
}
