//! User profiles: who may use which tool and how they like their answers, stored in SQLite
//! and loaded by `ingress` into the state's `user_context`.
//!
//! The store is a table `profiles(user_id, display_name, role, permissions, preferences)`
//! (permissions and preferences as JSON). By default it is an in-memory database seeded with
//! the demo profiles ([`demo_profiles`]); the flow option `profiles=PATH` opens a SQLite file
//! instead (created with the demo profiles when it does not exist yet, used as it is when it
//! does, so an operator can edit it with any SQLite tool).
//!
//! A user id the store does not know gets the `guest` role's permissions, marked
//! `known: false`: an unknown caller is never given more than a guest.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::lang::Lang;

/// How much detail an answer gives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// The numbers that answer the question.
    #[default]
    Brief,
    /// Every row and the documents' context.
    Full,
}

/// What a user prefers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preferences {
    /// The language to answer in when a message does not show one (`None`: English).
    #[serde(default)]
    pub language: Option<Lang>,
    /// The IANA zone for "what time is it" without a place (`None`: UTC).
    #[serde(default)]
    pub timezone: Option<String>,
    /// How much detail answers give.
    #[serde(default)]
    pub detail: Detail,
}

/// A stored profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// The id the user runs with (`--user`).
    pub user_id: String,
    /// How to address them.
    pub display_name: String,
    /// A role name (`analyst`, `guest`...), for messages and audits.
    pub role: String,
    /// The tools they may use (`*`: every tool).
    pub permissions: Vec<String>,
    /// How they like answers.
    pub preferences: Preferences,
}

/// The profile as the state holds it (the seed's `user_context`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserContext {
    /// The user id.
    pub user_id: String,
    /// Whether the store knew the id (an unknown id runs as a guest).
    pub known: bool,
    /// How to address them.
    pub display_name: String,
    /// Their role.
    pub role: String,
    /// The tools they may use (`*`: every tool).
    pub permissions: Vec<String>,
    /// Their preferences.
    pub preferences: Preferences,
}

impl UserContext {
    /// Whether the user may call `tool`.
    pub fn may_use(&self, tool: &str) -> bool {
        self.permissions.iter().any(|p| p == "*" || p == tool)
    }
}

/// The tools a guest may use.
pub const GUEST_PERMISSIONS: &[&str] = &["doc_search", "calculator", "datetime"];

/// The user when none is given.
pub const DEFAULT_USER: &str = "demo";

/// The profiles a new store starts with.
pub fn demo_profiles() -> Vec<Profile> {
    let all = || {
        vec![
            "sql_query".to_owned(),
            "doc_search".to_owned(),
            "calculator".to_owned(),
            "datetime".to_owned(),
        ]
    };
    vec![
        Profile {
            user_id: "demo".into(),
            display_name: "Ada".into(),
            role: "analyst".into(),
            permissions: all(),
            preferences: Preferences::default(),
        },
        Profile {
            user_id: "maria".into(),
            display_name: "María".into(),
            role: "analyst".into(),
            permissions: all(),
            preferences: Preferences {
                language: Some(Lang::Es),
                timezone: Some("Europe/Madrid".into()),
                detail: Detail::Full,
            },
        },
        Profile {
            user_id: "ivan".into(),
            display_name: "Иван".into(),
            role: "analyst".into(),
            permissions: all(),
            preferences: Preferences {
                language: Some(Lang::Ru),
                timezone: Some("Europe/Moscow".into()),
                detail: Detail::Brief,
            },
        },
        Profile {
            user_id: "guest".into(),
            display_name: "Guest".into(),
            role: "guest".into(),
            permissions: GUEST_PERMISSIONS.iter().map(|p| (*p).to_owned()).collect(),
            preferences: Preferences::default(),
        },
    ]
}

/// Names of the demo profiles, for help texts.
pub const DEMO_USERS: &str = "demo (analyst, every tool), maria (es, Europe/Madrid), ivan (ru, Europe/Moscow), guest (no sql_query)";

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// SQLite failed (open, schema, query).
    #[error("profile store {location}: {source}")]
    Sqlite {
        /// The file, or `memory`.
        location: String,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// A stored row does not parse.
    #[error(
        "profile store {location}: the profile of `{user_id}` is not valid: {message}; fix the row's JSON"
    )]
    Corrupt {
        /// The file, or `memory`.
        location: String,
        /// The user.
        user_id: String,
        /// What is wrong.
        message: String,
    },
}

/// The SQLite profile store.
pub struct ProfileStore {
    connection: Mutex<Connection>,
    location: String,
}

impl std::fmt::Debug for ProfileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfileStore")
            .field("location", &self.location)
            .finish()
    }
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS profiles (
    user_id TEXT PRIMARY KEY NOT NULL,
    display_name TEXT NOT NULL,
    role TEXT NOT NULL,
    permissions TEXT NOT NULL,
    preferences TEXT NOT NULL
)";

impl ProfileStore {
    /// An in-memory store with the demo profiles.
    pub fn demo() -> Result<ProfileStore, ProfileError> {
        let store = ProfileStore::from_connection(
            Connection::open_in_memory().map_err(|source| ProfileError::Sqlite {
                location: "memory".into(),
                source,
            })?,
            "memory".into(),
        )?;
        for profile in demo_profiles() {
            store.put(&profile)?;
        }
        Ok(store)
    }

    /// The store in the SQLite file `path`: created with the demo profiles when the file
    /// has no profile table yet, used as it is otherwise.
    pub fn open(path: &Path) -> Result<ProfileStore, ProfileError> {
        let location = path.display().to_string();
        let sqlite = |source| ProfileError::Sqlite {
            location: location.clone(),
            source,
        };
        let connection = Connection::open(path).map_err(sqlite)?;
        let existed: bool = connection
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'profiles'",
                [],
                |row| row.get::<_, i64>(0),
            )
            .map_err(sqlite)?
            > 0;
        let store = ProfileStore::from_connection(connection, location)?;
        if !existed {
            for profile in demo_profiles() {
                store.put(&profile)?;
            }
        }
        Ok(store)
    }

    fn from_connection(
        connection: Connection,
        location: String,
    ) -> Result<ProfileStore, ProfileError> {
        connection
            .execute_batch(SCHEMA)
            .map_err(|source| ProfileError::Sqlite {
                location: location.clone(),
                source,
            })?;
        Ok(ProfileStore {
            connection: Mutex::new(connection),
            location,
        })
    }

    /// Where the store lives (a path, or `memory`).
    pub fn location(&self) -> &str {
        &self.location
    }

    fn sqlite(&self, source: rusqlite::Error) -> ProfileError {
        ProfileError::Sqlite {
            location: self.location.clone(),
            source,
        }
    }

    /// Stores `profile`, replacing the one with the same id.
    pub fn put(&self, profile: &Profile) -> Result<(), ProfileError> {
        let connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        connection
            .execute(
                "INSERT INTO profiles (user_id, display_name, role, permissions, preferences)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (user_id) DO UPDATE SET display_name = excluded.display_name,
                   role = excluded.role, permissions = excluded.permissions,
                   preferences = excluded.preferences",
                params![
                    profile.user_id,
                    profile.display_name,
                    profile.role,
                    to_json(&profile.permissions),
                    to_json(&profile.preferences),
                ],
            )
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// The profile of `user_id`, if stored.
    pub fn get(&self, user_id: &str) -> Result<Option<Profile>, ProfileError> {
        let connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        let row = connection
            .query_row(
                "SELECT display_name, role, permissions, preferences FROM profiles WHERE user_id = ?1",
                params![user_id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.sqlite(e))?;
        let Some((display_name, role, permissions, preferences)) = row else {
            return Ok(None);
        };
        let corrupt = |message: String| ProfileError::Corrupt {
            location: self.location.clone(),
            user_id: user_id.to_owned(),
            message,
        };
        Ok(Some(Profile {
            user_id: user_id.to_owned(),
            display_name,
            role,
            permissions: serde_json::from_str(&permissions)
                .map_err(|e| corrupt(format!("permissions: {e}")))?,
            preferences: serde_json::from_str(&preferences)
                .map_err(|e| corrupt(format!("preferences: {e}")))?,
        }))
    }

    /// The user context of `user_id`: the stored profile, or a guest's permissions for an
    /// id the store does not know.
    pub fn context_for(&self, user_id: &str) -> Result<UserContext, ProfileError> {
        Ok(match self.get(user_id)? {
            Some(p) => UserContext {
                user_id: p.user_id,
                known: true,
                display_name: p.display_name,
                role: p.role,
                permissions: p.permissions,
                preferences: p.preferences,
            },
            None => UserContext {
                user_id: user_id.to_owned(),
                known: false,
                display_name: user_id.to_owned(),
                role: "guest".to_owned(),
                permissions: GUEST_PERMISSIONS.iter().map(|p| (*p).to_owned()).collect(),
                preferences: Preferences::default(),
            },
        })
    }
}

/// A column's JSON text (these types always serialize).
fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_store_knows_the_demo_users() {
        let store = ProfileStore::demo().unwrap();
        let maria = store.context_for("maria").unwrap();
        assert!(maria.known);
        assert_eq!(maria.preferences.language, Some(Lang::Es));
        assert!(maria.may_use("sql_query"));
        let guest = store.context_for("guest").unwrap();
        assert!(guest.known);
        assert!(!guest.may_use("sql_query"));
        assert!(guest.may_use("doc_search"));
    }

    #[test]
    fn unknown_users_are_guests() {
        let store = ProfileStore::demo().unwrap();
        let who = store.context_for("mallory").unwrap();
        assert!(!who.known);
        assert_eq!(who.role, "guest");
        assert!(!who.may_use("sql_query"));
    }

    #[test]
    fn a_file_store_is_seeded_once_and_keeps_edits() {
        let dir = std::env::temp_dir().join(format!(
            "agentgraph-profiles-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("profiles.sqlite");
        {
            let store = ProfileStore::open(&path).unwrap();
            let mut demo = store.get("demo").unwrap().unwrap();
            demo.permissions = vec!["calculator".into()];
            store.put(&demo).unwrap();
            store
                .put(&Profile {
                    user_id: "ada".into(),
                    display_name: "Ada".into(),
                    role: "admin".into(),
                    permissions: vec!["*".into()],
                    preferences: Preferences::default(),
                })
                .unwrap();
        }
        let store = ProfileStore::open(&path).unwrap();
        assert_eq!(
            store.get("demo").unwrap().unwrap().permissions,
            ["calculator"]
        );
        assert!(store.context_for("ada").unwrap().may_use("sql_query"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn corrupt_rows_are_reported_not_trusted() {
        let store = ProfileStore::demo().unwrap();
        store
            .connection
            .lock()
            .unwrap()
            .execute(
                "UPDATE profiles SET permissions = 'not json' WHERE user_id = 'demo'",
                [],
            )
            .unwrap();
        let error = store.context_for("demo").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("the profile of `demo` is not valid"),
            "{error}"
        );
    }
}
