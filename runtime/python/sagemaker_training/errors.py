"""The errors the toolkit raises."""


class ClientError(Exception):
    """A fault of the user's code or data, not of the platform."""


class _CalledProcessError(ClientError):
    """A process the toolkit ran ended with a non-zero exit code."""

    def __init__(self, cmd, return_code=None, output=None, info=None):
        super().__init__(cmd, return_code, output)
        self.cmd = cmd
        self.return_code = return_code
        self.output = output
        self.extra_info = info

    def __str__(self):
        text = "%s:\nExitCode %s\n" % (type(self).__name__, self.return_code)
        if self.output:
            text += 'ErrorMessage "%s"\n' % self.output.strip()
        text += 'Command "%s"' % (" ".join(self.cmd)
                                   if isinstance(self.cmd, (list, tuple))
                                   else self.cmd)
        if self.extra_info:
            text += '\nExtraInfo "%s"' % self.extra_info
        return text


class InstallModuleError(_CalledProcessError):
    """Installing the user's package failed."""


class InstallRequirementsError(_CalledProcessError):
    """Installing requirements.txt failed."""


class ImportModuleError(ClientError):
    """The user's module cannot be imported."""


class ExecuteUserScriptError(_CalledProcessError):
    """The user's entry point failed."""


class ChannelDoesNotExistError(Exception):
    """The job has no channel of that name."""

    def __init__(self, channel_name):
        super().__init__("Channel %s is not a valid channel" % channel_name)
        self.channel_name = channel_name


class UnsupportedFormatError(Exception):
    """A content type the toolkit cannot decode."""

    def __init__(self, content_type, **kwargs):
        super().__init__("Content type %s is not supported by this framework."
                         % content_type, **kwargs)
        self.content_type = content_type
