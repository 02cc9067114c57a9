#include "wire/four_letter_words.hpp"

#include <algorithm>

namespace warden::wire {

const std::vector<std::string>& four_letter_words() {
  static const std::vector<std::string> words{"ruok", "srvr", "stat", "conf", "cons", "envi", "mntr", "wchs",
                                              "wchc", "wchp", "dump", "isro", "dirs", "crst", "srst"};
  return words;
}

bool is_four_letter_word(std::string_view first4) {
  const auto& w = four_letter_words();
  return first4.size() == 4 && std::find(w.begin(), w.end(), first4) != w.end();
}

}  // namespace warden::wire
