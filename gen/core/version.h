/* version.h — the one place that states the version (also in meson.build). */
#ifndef CH_VERSION_H
#define CH_VERSION_H
#define CH_VERSION "0.1.0"
#endif
