# Installing and packaging (included by the top-level CMakeLists.txt).
#
# `cmake --install` lays out bin/warden-server and bin/warden, the client library and headers
# (recipes/CMakeLists.txt) and share/warden/zoo.cfg, the example configuration. `cpack -G DEB`
# in a build directory makes warden_<version>_<arch>.deb: the same files under /usr, plus what
# only the package installs (the "package" component, left out of a plain install):
# /etc/warden/zoo.cfg (a conffile; conf/zoo.cfg with dataDir /var/lib/warden), the systemd
# unit, and the maintainer scripts that make the `warden` system user.
include(GNUInstallDirs)
install(TARGETS warden-server RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/conf/zoo.cfg DESTINATION ${CMAKE_INSTALL_DATADIR}/warden)

# The package's zoo.cfg: the example's, its data where the package keeps it.
file(READ ${PROJECT_SOURCE_DIR}/conf/zoo.cfg WARDEN_EXAMPLE_CFG)
string(REGEX REPLACE "\ndataDir=[^\n]*" "\ndataDir=/var/lib/warden" WARDEN_PACKAGE_CFG "${WARDEN_EXAMPLE_CFG}")
file(WRITE ${PROJECT_BINARY_DIR}/package/zoo.cfg "${WARDEN_PACKAGE_CFG}")
install(FILES ${PROJECT_BINARY_DIR}/package/zoo.cfg DESTINATION /etc/warden COMPONENT package EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/warden.service DESTINATION /lib/systemd/system COMPONENT package
        EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT package EXCLUDE_FROM_ALL)
file(WRITE ${PROJECT_BINARY_DIR}/package/conffiles "/etc/warden/zoo.cfg\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME warden)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Warden")
set(CPACK_PACKAGE_CONTACT "Warden maintainers <maintainers@warden.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "ZooKeeper-compatible coordination server")
set(CPACK_PACKAGE_DESCRIPTION "Warden serves ZooKeeper's client protocol, zoo.cfg and security settings, standalone or as a replicated ensemble.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified package)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/package/conffiles ${CMAKE_CURRENT_LIST_DIR}/postinst ${CMAKE_CURRENT_LIST_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
