"""The built-in models of gradsync jobs, as PyTorch modules.

Each matches worker/model/models.cc parameter for parameter (names, shapes,
and the forward pass), so a job's pulled weights load with strict=True and
predict what the C++ model predicted. Build one by the name a job used:

    model = gradsync.models.create("fashion_cnn")            # 1x28x28, 10 classes
    model = gradsync.models.create("resnet18", channels=3, height=32, width=32)

Needs only torch.
"""
import torch
from torch import nn

__all__ = ["FashionCNN", "LeNet", "MLP", "ResNet18", "create", "fashion_cnn",
           "lenet", "mlp", "resnet18"]


class FashionCNN(nn.Module):
    """The seeds' Fashion-MNIST CNN (28x28 inputs)."""

    def __init__(self, channels=1, classes=10):
        super().__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(channels, 32, kernel_size=3, padding=1),
            nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))
        self.layer2 = nn.Sequential(
            nn.Conv2d(32, 64, kernel_size=3), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2))
        self.fc1 = nn.Linear(64 * 6 * 6, 600)
        self.drop = nn.Dropout2d(0.25)
        self.fc2 = nn.Linear(600, 120)
        self.fc3 = nn.Linear(120, classes)

    def forward(self, x):
        x = self.fc1(self.layer2(self.layer1(x)).flatten(1))
        # What nn.Dropout2d does to the (N, 600) activations (the seeds
        # apply it there), without its warning about 2-D inputs.
        x = torch.feature_dropout(x, self.drop.p, self.training)
        return self.fc3(self.fc2(x))


class LeNet(nn.Module):
    """LeNet-5 with padding on the first convolution (inputs >= 12x12)."""

    def __init__(self, channels=1, height=28, width=28, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        h, w = (height // 2 - 4) // 2, (width // 2 - 4) // 2
        self.fc1 = nn.Linear(16 * h * w, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = torch.relu(torch.max_pool2d(self.conv1(x), 2))
        x = torch.relu(torch.max_pool2d(self.conv2(x), 2)).flatten(1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class MLP(nn.Module):
    """One hidden layer of 256."""

    def __init__(self, channels=1, height=28, width=28, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(channels * height * width, 256)
        self.fc2 = nn.Linear(256, classes)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


class BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock."""

    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1,
                               bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.downsample = None
        if stride != 1 or inputs != outputs:
            self.downsample = nn.Sequential(
                nn.Conv2d(inputs, outputs, 1, stride=stride, bias=False),
                nn.BatchNorm2d(outputs))

    def forward(self, x):
        out = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        shortcut = x if self.downsample is None else self.downsample(x)
        return torch.relu(out + shortcut)


class ResNet18(nn.Module):
    """ResNet-18 for small images: torchvision's names, a 3x3 stem and no
    max pool (as for CIFAR)."""

    def __init__(self, channels=3, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 64, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        inputs = 64
        for i, width in enumerate((64, 128, 256, 512)):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(
                BasicBlock(inputs, width, stride), BasicBlock(width, width, 1)))
            inputs = width
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        for i in range(1, 5):
            x = getattr(self, f"layer{i}")(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def fashion_cnn(channels=1, classes=10):
    return FashionCNN(channels, classes)


def lenet(channels=1, height=28, width=28, classes=10):
    return LeNet(channels, height, width, classes)


def mlp(channels=1, height=28, width=28, classes=10):
    return MLP(channels, height, width, classes)


def resnet18(channels=3, classes=10):
    return ResNet18(channels, classes)


def create(name, channels=1, height=28, width=28, classes=10):
    """The model a job with `--model name` trains, for images of
    channels x height x width and `classes` classes."""
    if name == "fashion_cnn":
        if (height, width) != (28, 28):
            raise ValueError(f"fashion_cnn takes 28x28 images (got {height}x{width})")
        return fashion_cnn(channels, classes)
    if name == "lenet":
        if height < 12 or width < 12:
            raise ValueError("lenet needs images >= 12x12")
        return lenet(channels, height, width, classes)
    if name == "mlp":
        return mlp(channels, height, width, classes)
    if name == "resnet18":
        return resnet18(channels, classes)
    raise ValueError(f"unknown model '{name}' (fashion_cnn, lenet, mlp, resnet18)")
