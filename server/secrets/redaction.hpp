#pragma once
// What the server may show of its settings to anyone who asks: the AdminServer's commands, the
// four-letter words, the start's log lines and the configuration's error messages all pass a
// setting's value through here, so a password, a secret or the super digest from zoo.cfg, the
// launcher's -D flags or a JAAS file is never shown in clear (ZooKeeper 3.8 hides none of them
// from `sysp`/`icfg`; Warden hides all).

#include <string>
#include <string_view>

namespace warden::server::secrets {

// What a secret's value is shown as.
inline constexpr std::string_view mask = "********";

// True when a setting of this name holds a secret: its name (case aside) mentions a password,
// a passphrase, a secret, a credential, a private key's pass or the super digest, or it is a
// JAAS option that holds one (user_NAME="password"). The rule goes by the name, so a key that
// Warden does not read is hidden too.
bool secret_key(std::string_view key);

// `value`, or the mask when `key` names a secret.
std::string shown_value(std::string_view key, std::string_view value);

// A configuration text (zoo.cfg, a dynamic file, "-Dkey=value" flags) with the value of every
// line whose key names a secret replaced by the mask; every other byte kept as it was.
std::string redacted_text(std::string_view text);

}  // namespace warden::server::secrets
